"""A process killed while it writes an output (SIGKILL, the out-of-memory killer) leaves its
hidden staging folder or file beside the output; the next write of that output removes what
gone processes of this machine left, and nothing of a running process or another machine."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from latentbench.io._outputs import replace_whole, staging_path, write_directory

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL and os.kill(pid, 0)")

# writes out/ through write_directory, its second file never finished: killed there
KILLED = """
import sys, time
from pathlib import Path
from latentbench.io._outputs import write_directory

def stuck(path):
    path.write_text("half")
    print("writing", flush=True)
    time.sleep(60)

write_directory(Path(sys.argv[1]), {"a.csv": lambda p: p.write_text("a"), "b.csv": stuck,
                                    "fit.json": lambda p: p.write_text("{}")}, last="fit.json")
"""


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_write_killed_midway_leaves_nothing_after_the_next_write(tmp_path: Path):
    out = tmp_path / "fit"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(out)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "writing"
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = _hidden(tmp_path)
    assert len(left) == 1 and ".partial-" in left[0], left  # what the kill leaves
    assert not out.exists()

    write_directory(out, {"fit.json": lambda p: p.write_text("{}")}, last="fit.json")
    assert _hidden(tmp_path) == []  # was: the killed run's folder, for good
    assert sorted(p.name for p in out.iterdir()) == ["fit.json"]


def test_only_leftovers_of_gone_processes_of_this_machine_are_removed(tmp_path: Path):
    out = tmp_path / "report.html"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(gone.stdout)
    mine = staging_path(out, "tmp")  # this process's own name (another thread's write)
    host = mine.name.split("-")[1]
    names = {
        "dead": f".report.html.tmp-{host}-{dead}-0123456789ab",
        "dead_folder": f".report.html.partial-{host}-{dead}-0123456789ab",
        "running": f".report.html.tmp-{host}-{os.getpid()}-0123456789ab",
        "other_machine": f".report.html.tmp-elsewhere{host}-{dead}-0123456789ab",
        "not_ours": ".report.html.tmp-notes",
        "other_output": f".report2.html.tmp-{host}-{dead}-0123456789ab",
    }
    for key, name in names.items():
        if key == "dead_folder":
            (tmp_path / name).mkdir()
            (tmp_path / name / "items.csv").write_text("x")
        else:
            (tmp_path / name).write_text("x")
    time.sleep(0.01)

    replace_whole(out, "<html></html>")
    write_directory(tmp_path / "report.html.d", {"x": lambda p: p.write_text("")}, last="x")
    left = set(_hidden(tmp_path))
    assert names["dead"] not in left  # the tmp file of replace_whole's killed writer
    assert names["running"] in left
    assert names["other_machine"] in left
    assert names["not_ours"] in left
    assert names["other_output"] in left
    assert out.read_text() == "<html></html>"
    # the folder-kind leftover is removed by the next write of a folder of that name
    assert names["dead_folder"] in left
    (tmp_path / "report.html").unlink()
    write_directory(out, {"x": lambda p: p.write_text("")}, last="x")
    assert names["dead_folder"] not in set(_hidden(tmp_path))


def test_a_file_behind_a_symlink_is_replaced_whole_and_the_link_kept(tmp_path):
    """Before: a symlink (a live run's progress snapshot linked elsewhere, a report linked
    into a web folder) was written in place, so a reader at that moment could see half of
    it. Its target is now replaced whole (a new file renamed over it) and the link stays."""
    target = tmp_path / "real" / "progress.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "progress.json"
    link.symlink_to(target)
    before = target.stat().st_ino
    replace_whole(link, "new")
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert target.read_text() == "new"
    assert target.stat().st_ino != before  # renamed over, not rewritten in place
    assert sorted(p.name for p in target.parent.iterdir()) == ["progress.json"]


@pytest.mark.parametrize("through_link", [True, False])
def test_a_replaced_file_keeps_its_permissions(tmp_path, through_link):
    """A private file (``0600``) behind a symlink was written in place, its permissions kept;
    since its target is replaced whole, the new file took the umask's (``0644``: readable by
    everyone). A file replaced keeps its own permissions, behind a link or not."""
    target = tmp_path / "real" / "estimate.json"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o600)
    path = tmp_path / "estimate.json"
    if through_link:
        path.symlink_to(Path("real") / "estimate.json")  # a relative link
    else:
        path = target
    replace_whole(path, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_link_whose_target_folder_takes_no_new_file_is_written_in_place(tmp_path, monkeypatch):
    """A link into a folder read-only to this user (its file writable) was written in place;
    replacing its target whole needs a new file beside it, which that folder refuses: the
    write failed where it had worked. It is written in place there, as before."""
    import latentbench.io._outputs as outputs

    target = tmp_path / "shared" / "progress.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "progress.json"
    link.symlink_to(target)
    # the staging file cannot be made beside the target (as in a folder without write access)
    monkeypatch.setattr(outputs, "staging_path", lambda final, tag: tmp_path / "no" / "x.tmp")
    replace_whole(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    plain = tmp_path / "plain.json"  # not a link: the refusal is raised, nothing written
    plain.write_text("old")
    with pytest.raises(OSError):
        replace_whole(plain, "new")
    assert plain.read_text() == "old"
