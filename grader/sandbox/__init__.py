"""The sandbox, split at the trust boundary.

`inside/` runs in the sandbox's processes (the template, lesson servers, attendants and each
submission's process); `outside/` runs in the grading process (protections, cgroups, the client
that starts the template and reads its reports). `wire` is the protocol both sides speak. Neither
folder imports the other, and nothing here imports the grading, judging or command packages.
"""
