"""`python -m mercadofresco.course.checker`: the checker's process (`process`), started by the grader's runner."""

import sys

from mercadofresco.course.checker import process

sys.exit(process.main())
