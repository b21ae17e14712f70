"""Every hook is documented in the README's plugin guide; the README's commands exist."""

import inspect
from pathlib import Path

from roofkit import hookspecs

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_hook_is_in_the_plugin_guide():
    hooks = [n for n, f in inspect.getmembers(hookspecs, inspect.isfunction)
             if n.startswith("roofkit_")]
    assert len(hooks) >= 5
    guide = README.split("## Writing a plugin", 1)
    assert len(guide) == 2, "README needs a '## Writing a plugin' section"
    missing = [h for h in hooks if f"`{h}" not in guide[1]]
    assert not missing, f"hooks missing from the README plugin guide: {missing}"


def test_readme_gives_the_install_and_test_commands():
    head = README[:2500]
    assert "pip install" in head and "pytest" in head


def test_readme_python_examples_run():
    """Every ```python block of the README runs as written."""
    blocks = [b.split("```", 1)[0] for b in README.split("```python\n")[1:]]
    assert len(blocks) >= 4
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme", "__file__": "README.md"})
