"""The progress bar: drawn on stderr only inside ``allowed()`` and only on a terminal; the
command line allows it except for JSON, CSV and Markdown output."""

import argparse
import io
import sys
from concurrent.futures import ThreadPoolExecutor

import roofkit
from roofkit import progress
from roofkit.cli import machine_output
from roofkit.serving import validation


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bar_draws_on_a_terminal_inside_allowed():
    tty = _Terminal()
    with progress.allowed(), progress.Bar(4, "work", stream=tty) as bar:
        for _ in range(4):
            bar.update()
    assert "work [" in tty.getvalue() and "] 4/4" in tty.getvalue()


def test_bar_is_silent_outside_allowed_or_off_a_terminal():
    tty, pipe = _Terminal(), io.StringIO()
    with progress.Bar(4, "work", stream=tty) as bar:
        bar.update(4)
    with progress.allowed(), progress.Bar(4, "work", stream=pipe) as bar:
        bar.update(4)
    assert tty.getvalue() == "" and pipe.getvalue() == ""


def test_validation_and_executor_sweeps_report_progress(registry, monkeypatch):
    tty = _Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    cat = registry.catalogues["validation"]
    cases = [cat[n] for n in sorted(cat) if not cat[n].superseded_by][:3]
    with progress.allowed():
        validation.run(registry=registry, cases=cases)
        with ThreadPoolExecutor(2) as pool:
            roofkit.sweep("llama-3.1-8b", ["h100"], ["fp8"], batch_sizes=list(range(1, 9)),
                          mode="decode", executor=pool, chunk_size=2, registry=registry)
    text = tty.getvalue()
    assert "validate [" in text and "3/3" in text
    assert "sweep chunks [" in text and "4/4" in text


def test_the_cli_allows_progress_except_for_machine_output():
    assert machine_output(argparse.Namespace(json=True))
    assert machine_output(argparse.Namespace(json=False, csv=True))
    assert machine_output(argparse.Namespace(markdown=True))
    assert not machine_output(argparse.Namespace(json=False))
