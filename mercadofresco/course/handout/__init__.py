"""What a learner is handed: the labs built from the solutions, the learner bundle, the words of a self-check.

Nothing here runs a learner's code or holds a verdict; the learner bundle ships this room whole (with the two
doors, `course.checks` and `course.selfcheck`, and `course.protocol`), and none of the grader's rooms.
"""
