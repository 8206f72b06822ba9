"""The labs: what a learner is handed, how one learner's notebook is run and checked, and a class's results.

    checks.py, selfcheck.py   the labs' two doors: a lab imports them by these paths, which never move
    protocol.py               the plan and the rows the grader's processes share, typed; it imports nothing here
    handout/                  what a learner is handed: the lab build, the learner bundle, the self-check's words
    run/                      one learner set apart and watched: sandbox, watch, limits, nbval's run, its plugin
    checker/                  the trusted side: the Lab the hidden checks use, the wire, the kernel's end of it
    grading/                  a class: grade, results, gradebook, marks, LMS files, reports, the command line

pyproject.toml's contract orders them: selfcheck, grading, run, handout, checker, then checks and protocol; each
imports only from the rooms after it. The learner bundle ships the doors, protocol and handout/.
"""
