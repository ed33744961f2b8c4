"""The files of a version by the names in their paths: a folder name, a file name or a file's stem (lower
case) → the files. Queries look up a few words each; a one-shot search used to build the whole map for
them (0.1 s on a 28k-file monorepo). Here the folders are indexed once per folder, not per file, and a
word's files are gathered on its first lookup (the build: 37 → 26 ms on that monorepo's 28,450 files)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence


class PathIndex(Mapping[str, set[str]]):
    """``index.get("utils")``: every file under a folder named ``utils``, named ``utils`` (any
    extension) or ``utils`` itself; a word no path holds is not a key."""

    def __init__(self, files: Iterable[str]) -> None:
        by_dir: dict[str, list[str]] = {}
        names: dict[str, str | list[str]] = {}  # one path as itself: a set per name was half the build
        for p in files:
            folder, _, name = p.rpartition("/")
            here = by_dir.get(folder)
            if here is None:
                by_dir[folder] = [p]
            else:
                here.append(p)
            low = name.lower()
            stem, dot, _ = low.rpartition(".")
            for key in (low, stem) if dot else (low,):
                got = names.get(key)
                if got is None:
                    names[key] = p
                elif isinstance(got, str):
                    names[key] = [got, p]
                else:
                    got.append(p)
        under: dict[str, list[str]] = {}  # folder name -> the folders (paths) with that component
        for folder in by_dir:
            if folder:
                for comp in set(folder.lower().split("/")):
                    under.setdefault(comp, []).append(folder)
        self._by_dir = by_dir
        self._names = names
        self._under = under
        self._memo: dict[str, set[str]] = {}
        # made on first use (2,476 folders of a 28,734-file workspace: about 1 ms), each assigned whole
        # once built, so a thread never sees one half made: the folders by their last name (lower case),
        # and a folder's file names
        self._by_folder_name: dict[str, list[str]] | None = None
        self._names_in: dict[str, frozenset[str]] = {}

    def __getitem__(self, key: str) -> set[str]:
        got = self._memo.get(key)
        if got is None:
            got = set(self._named(key))
            for folder in self._under.get(key, ()):
                got.update(self._by_dir[folder])
            if not got:
                raise KeyError(key)
            self._memo[key] = got
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._names.keys() | self._under.keys())

    def __len__(self) -> int:
        return len(self._names.keys() | self._under.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self._names or key in self._under)

    def with_suffix(self, tail: str) -> list[str]:
        """The files whose path is ``tail`` or ends with ``/`` and ``tail`` (exact case), sorted: looked
        for in the folders that end like ``tail``'s folder (not among every file under a folder of that
        name, nor every ``__init__.py``)."""
        folder, _, name = tail.rpartition("/")
        if not folder:
            return sorted(p for p in self._named(name.lower()) if p == tail or p.endswith("/" + tail))
        return sorted(f"{f}/{name}" for f in self.folders_ending(folder) if name in self._file_names(f))

    def folders_ending(self, tail: str) -> list[str]:
        """The folders holding files whose path is ``tail`` or ends with ``/`` and ``tail`` (exact case)."""
        return [
            f
            for f in self._folders_named().get(tail.rpartition("/")[2].lower(), ())
            if f == tail or f.endswith("/" + tail)
        ]

    def named_in_folders_named(self, name: str, folder: str) -> list[str]:
        """The files named ``name`` directly in a folder named ``folder`` (both lower case, compared
        without case): a written path's last two components, read from the shorter of the files so
        named and the files of those folders (a big tree's ``__init__.py``; a folder of 15,000 files)."""
        folders = self._folders_named().get(folder, [])
        named = self._named(name)
        if len(named) <= sum(len(self._by_dir[f]) for f in folders):
            return [
                p
                for p in named
                if _is_named(p, name) and p.rpartition("/")[0].rpartition("/")[2].lower() == folder
            ]
        return [p for f in folders for p in self._by_dir[f] if _is_named(p, name)]

    def _named(self, key: str) -> Sequence[str]:
        """The files named ``key`` or with ``key`` as their stem (lower case)."""
        got = self._names.get(key, ())
        return (got,) if isinstance(got, str) else got

    def _folders_named(self) -> dict[str, list[str]]:
        got = self._by_folder_name
        if got is None:
            got = {}
            for f in self._by_dir:
                got.setdefault(f.rpartition("/")[2].lower(), []).append(f)
            self._by_folder_name = got
        return got

    def _file_names(self, folder: str) -> frozenset[str]:
        got = self._names_in.get(folder)
        if got is None:
            got = self._names_in[folder] = frozenset(p.rpartition("/")[2] for p in self._by_dir[folder])
        return got

    def files_in(self, folder: str) -> list[str]:
        """The files directly in ``folder`` (exact case), in the order indexed."""
        return self._by_dir.get(folder, [])


def _is_named(path: str, name: str) -> bool:
    """Whether ``path``'s file name is ``name`` (lower case), case aside."""
    return path.rpartition("/")[2].lower() == name
