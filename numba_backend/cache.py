"""The numba backend's compiled programs, in memory and on disk.

An entry is a folder `program_<digest>/` of the cache directory (its
module text's hash, which covers the backend's own source and numba's
version, see backend.VERSION) holding the generated module `program.py`
and the files Numba's own cache writes for its `program` function in
`__pycache__/` (an index `.nbi` and object code `.nbc`); a folder per entry
keeps each entry's file lookups independent of how many entries there are.
Numba checks neither file (a damaged index raises on every later load; a
flipped bit in object code loads silently), so each entry also has
`program.sums`, the SHA-256 of those files, written when the program was
compiled: an entry whose files do not match it is deleted and compiled
again. A lock file per entry (`program.lock`, `fcntl.flock`) makes a
process that finds another one compiling the same program wait for it
rather than race it. The directory is kept under a size bound by deleting
the entries least recently loaded (`REFIMPL_NUMBA_CACHE_MAX_MB`, default
2048): a process measures it after the first program it compiles, and
again each time the programs it has compiled since add up to a 32nd of the
bound (measuring reads every entry's files: about a second for 10,000
entries). `clear()` deletes them all.
"""

import contextlib
import fcntl
import glob
import hashlib
import importlib.util
import json
import os
import sys
import threading

_DEFAULT_MAX_MB = 2048
_memory = {}   # module text -> the compiled `program` (a Numba dispatcher), this process
_lock = threading.Lock()
_unmeasured = None   # bytes this process compiled since it last pruned (None: it never has)


def directory():
  """`$REFIMPL_NUMBA_CACHE_DIR`, else ~/.cache/refimpl/numba."""
  path = os.environ.get("REFIMPL_NUMBA_CACHE_DIR")
  return path or os.path.join(os.path.expanduser("~"), ".cache", "refimpl", "numba")


def max_bytes():
  return int(float(os.environ.get("REFIMPL_NUMBA_CACHE_MAX_MB", _DEFAULT_MAX_MB)) * 2**20)


class Entry:
  """The files of one program: its folder in the cache directory."""

  def __init__(self, root, digest):
    self.name = f"program_{digest}"
    self.folder = os.path.join(root, self.name)
    self.source = os.path.join(self.folder, "program.py")
    self.sums = os.path.join(self.folder, "program.sums")
    self.lock_path = os.path.join(self.folder, "program.lock")

  def numba_files(self):
    """Numba's cache files of the entry's program (index and object code;
    not Python's bytecode of the module, which lives beside them)."""
    return sorted(glob.glob(os.path.join(self.folder, "__pycache__", "program.*.nb[ic]")))

  def files(self):
    """Every file of the entry but its lock (the module, its checksums, and
    what Numba and Python cached of it)."""
    cached = glob.glob(os.path.join(self.folder, "__pycache__", "*"))
    return [p for p in [self.source, self.sums, *cached] if os.path.isfile(p)]

  @contextlib.contextmanager
  def locked(self):
    with open(self.lock_path, "a") as f:
      fcntl.flock(f, fcntl.LOCK_EX)
      try:
        yield
      finally:
        fcntl.flock(f, fcntl.LOCK_UN)

  def checksums(self):
    sums = {}
    for path in self.numba_files():
      with open(path, "rb") as f:
        sums[os.path.basename(path)] = hashlib.sha256(f.read()).hexdigest()
    return sums

  def write_checksums(self):
    _write_atomically(self.sums, json.dumps(self.checksums(), sort_keys=True))

  def verify(self, text):
    """Makes the entry's files trustworthy: the module holds `text` (else
    it is rewritten) and Numba's files match their checksums (else they are
    deleted, so that Numba compiles again)."""
    try:
      with open(self.source) as f:
        intact = f.read() == text
    except OSError:
      intact = False
    if not intact:
      _write_atomically(self.source, text)
    try:
      with open(self.sums) as f:
        expected = json.load(f)
    except (OSError, ValueError):
      expected = None
    if intact and expected is not None and expected == self.checksums():
      os.utime(self.sums)   # recently used: kept longest under the size bound
      return
    for path in self.numba_files():
      os.remove(path)
    with contextlib.suppress(FileNotFoundError):
      os.remove(self.sums)

  def remove(self):
    """Deletes the entry's files (its folder and lock file stay: a process may hold it)."""
    for path in self.files():
      with contextlib.suppress(FileNotFoundError):
        os.remove(path)

  def size(self):
    total = 0
    for path in self.files():
      with contextlib.suppress(FileNotFoundError):
        total += os.path.getsize(path)
    return total


def _write_atomically(path, text):
  temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
  with open(temporary, "w") as f:
    f.write(text)
  os.replace(temporary, path)   # a reader sees the old file or the new one, whole


def program(text, digest):
  """The compiled `program` of the module `text`: from memory, else from its
  cache entry (Numba loads or compiles it at the first call, under the
  entry's lock, and the entry's checksums are written then)."""
  function = _memory.get(text)
  if function is not None:
    return function
  with _lock:
    function = _memory.get(text)
    if function is None:
      entry = Entry(directory(), digest)
      os.makedirs(entry.folder, exist_ok=True)
      with entry.locked():
        entry.verify(text)
        spec = importlib.util.spec_from_file_location(f"numba_backend_{entry.name}", entry.source)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
      function = _memory[text] = _FirstCall(module.program, entry)
  return function


class _FirstCall:
  """A program whose first call (where Numba loads or compiles its code)
  holds the entry's lock and records the entry's checksums."""

  def __init__(self, dispatcher, entry):
    self.dispatcher, self.entry = dispatcher, entry
    self.ready = False

  def __call__(self, *args):
    if self.ready:
      return self.dispatcher(*args)
    with self.entry.locked():
      compiled_before = bool(self.entry.numba_files())
      out = self.dispatcher(*args)
      if not compiled_before or not os.path.exists(self.entry.sums):
        self.entry.write_checksums()
    self.ready = True
    if not compiled_before:
      _compiled(self.entry.size())
    return out


def _compiled(size):
  """Counts an entry of `size` bytes this process compiled; prunes the
  directory at the first, and once those since the last prune reach a 32nd
  of the bound."""
  global _unmeasured
  with _lock:
    _unmeasured = None if _unmeasured is None else _unmeasured + size
    due = _unmeasured is None or _unmeasured >= max_bytes() // 32
    if due:
      _unmeasured = 0
  if due:
    prune()


def _entries(root):
  """The entries of the cache directory `root` that hold a program."""
  return [Entry(root, os.path.basename(os.path.dirname(p))[len("program_"):])
          for p in glob.glob(os.path.join(root, "program_*", "program.py"))]


def prune(limit=None):
  """Deletes the entries least recently loaded until the directory holds at
  most `limit` bytes (default: `max_bytes()`); entries another process holds
  locked are kept."""
  limit = max_bytes() if limit is None else limit
  root = directory()
  entries = _entries(root)
  total = sum(e.size() for e in entries)
  if total <= limit:
    return
  def last_use(e):
    return os.path.getmtime(e.sums) if os.path.exists(e.sums) else 0.0
  for entry in sorted(entries, key=last_use):
    if total <= limit:
      break
    with open(entry.lock_path, "a") as f:
      try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        continue
      size = entry.size()
      entry.remove()
      total -= size


def clear():
  """Deletes the cache directory's programs and what Numba cached of them
  (the programs already loaded in this process keep working)."""
  for entry in _entries(directory()):
    entry.remove()
