"""What students wrote, made safe to show: in a terminal, a spreadsheet, a feedback page."""
