# The sorter, an HTTP agent in Python on Baton's Python SDK (pip install
# /path/to/baton/sdk/python): the SDK checks the signature of each call,
# decodes the work and answers with the report.
import os

import baton


def sorter(work: baton.Work) -> baton.Outcome:
    text = work.input.get("text", "")
    return baton.Outcome("sorted", {"urgent": "down" in text, "topic": "billing"})


baton.serve({"sorter": sorter}, port=9000, secret=os.environ["SORTER_SECRET"])
