"""The paths git accepts in a commit, element by element, with git's own rules (dulwich's ports of
them). git refuses a tree entry named .git in any spelling a file system may fold into it: any
case, trailing dots or spaces and the 8.3 short name git~1 (NTFS), and with Unicode characters HFS+ ignores
(a zero-width joiner inside it). `git fsck` reports such a commit (hasDotgit), `git clone` stops on it and hosts that
check what is pushed refuse the whole repository, so none is ever committed. The rules are applied
whatever the worker's system: the repository is checked out elsewhere."""

from dulwich.index import validate_path_element_default, validate_path_element_hfs, validate_path_element_ntfs

EMPTY_OR_DOTS = "empty, '.' and '..' parts are refused"
BACKSLASH = "a backslash separates folders on Windows (use /)"
NUL = "a NUL character ends a name in git's trees"
DOTS_AND_SPACES = "a part of only dots and spaces is an empty name on Windows (it drops trailing dots and spaces)"
DOTGIT = (
    "git refuses .git in any spelling (any case, with trailing dots or spaces, git~1, or with invisible Unicode "
    "characters), as the name of its own folder"
)
_RULES = (validate_path_element_default, validate_path_element_ntfs, validate_path_element_hfs)


def element_problem(element: str) -> str | None:
    """Why git refuses `element` as the name of a file or folder, or None."""
    if element in {"", ".", ".."}:
        return EMPTY_OR_DOTS
    if "\\" in element:
        return BACKSLASH
    if "\0" in element:
        return NUL
    if not element.rstrip(". "):
        return DOTS_AND_SPACES
    raw = element.encode()
    if not all(accepts(raw) for accepts in _RULES):
        return DOTGIT
    return None


def path_problem(path: str) -> tuple[str, str] | None:
    """(the element, why) for the first element of `path` git refuses, or None."""
    for element in path.split("/"):
        problem = element_problem(element)
        if problem is not None:
            return element, problem
    return None
