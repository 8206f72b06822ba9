"""The labs and their grading: the solutions' checks, fresh wrong answers, hostile notebooks, a class."""
