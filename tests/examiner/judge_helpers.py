"""The task and the two answers the judging tests share (one csv question, a right answer and
an "I don't know"), so each test file states only what it varies."""

from __future__ import annotations

from drarena.examiner.judge import AnswerForJudge
from drarena.examiner.taskcheck import ChecklistItem, Task

TASK = Task(
    question="Which module reads delimited text?",
    word_limit_instruction="Answer in 160 to 260 words.",
    word_limit=(160, 260),
    checklist_depth=(ChecklistItem("the csv module", "http://x/csv.html"),),
    checklist_width=(ChecklistItem("reader yields lists", "http://x/csv.html"),),
    rationale="r",
)
A = AnswerForJudge("Answer A: the csv module", 1, 1, 0)
B = AnswerForJudge("Answer B: no idea", 0, 0, 0)
