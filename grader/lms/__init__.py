"""The learning platforms a course lives in: rosters and submissions in, grades and feedback out."""
