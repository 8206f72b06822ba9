"""The workbook's tests, by area: package/, notebooks/, labs/ (and grading), hub/, browser/."""
