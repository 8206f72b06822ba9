"""The course's tooling, not the shop's code: lab build, grading, the checks labs use, the notebook runner."""
