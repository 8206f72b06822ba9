"""A class's results: grade a folder of notebooks (`grade`), one result file each (`results`), merged into a
gradebook (`gradebook`, `marks`, `lms`) and the reports an instructor reads (`reports`).

    python -m mercadofresco.course.grading build | grade | merge | regrade    (the command line: `commands`)
"""

from mercadofresco.course.grading.grade import (
    MOVED_SCAN_CHARS,
    Setting,
    grade,
    grade_notebook,
    in_shard,
    moved_names,
    score,
)
from mercadofresco.course.grading.results import LearnerReport

__all__ = [
    "MOVED_SCAN_CHARS",
    "LearnerReport",
    "Setting",
    "grade",
    "grade_notebook",
    "in_shard",
    "moved_names",
    "score",
]
