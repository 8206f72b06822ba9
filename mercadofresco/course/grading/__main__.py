"""`python -m mercadofresco.course.grading`: the grading command line (`commands`)."""

import sys

from mercadofresco.course.grading import commands

sys.exit(commands.main())
