"""Atomic file writes: write to a temporary file in the target's folder, then rename into place.

A crash, an exception or a full disk in the middle of a save therefore never leaves a
half-written file under the target name: the previous file (if any) stays intact until
``os.replace`` swaps the finished file in, which POSIX and Windows both do atomically within
one file system. The temporary file lives in the same folder so that the rename never crosses
file systems.
"""

import contextlib
import errno
import os
import tempfile

_UMASK = os.umask(0)
os.umask(_UMASK)


def check_target(filepath, overwrite=True, who="save"):
    """Raise a clear error if ``filepath`` cannot be written; returns its absolute path.

    Raises:
        FileNotFoundError: if the folder does not exist.
        NotADirectoryError: if a file stands where the path needs a folder.
        IsADirectoryError: if ``filepath`` is an existing folder.
        FileExistsError: if the file exists and ``overwrite`` is False.
    """
    filepath = os.fspath(filepath)
    folder = os.path.dirname(os.path.abspath(filepath))
    if not os.path.isdir(folder):
        existing = folder
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            raise NotADirectoryError(f"{who}: {existing!r} is a file, not a folder, so nothing "
                                     f"can be saved under it. Received: filepath={filepath!r}")
        raise FileNotFoundError(f"{who}: the folder {folder!r} does not exist; create it first "
                                f"(os.makedirs). Received: filepath={filepath!r}")
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"{who}: the path is an existing folder, not a file name. "
                                f"Received: filepath={filepath!r}")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{who}: the file exists and overwrite=False. Pass overwrite=True "
                              f"to replace it. Received: filepath={filepath!r}")
    return os.path.abspath(filepath)


@contextlib.contextmanager
def atomic_write(filepath, overwrite=True, who="save"):
    """Yield a temporary path next to ``filepath``; on success rename it to ``filepath``.

    The caller writes the whole file to the yielded path. If the ``with`` body raises, the
    temporary file is deleted and ``filepath`` is left exactly as it was. The finished file is
    flushed to disk (``fsync``) before the rename and gets the usual permissions (0o666 minus
    the umask), or the old file's permissions when it replaces one.

    Raises:
        The errors of `check_target`, and whatever the body raises.
    """
    target = check_target(filepath, overwrite, who)
    folder, name = os.path.split(target)
    remove_stale_temporaries(folder, name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise _user_error(e, who, filepath, f"creating a file in the folder {folder!r} "
                          "failed") from e
    os.close(fd)
    try:
        try:
            yield tmp
        except OSError as e:
            if tmp not in str(e) and not _no_room(e):
                raise
            raise _user_error(e, who, filepath, "writing the file failed") from e
        try:
            _fsync(tmp)
            mode = os.stat(target).st_mode & 0o7777 if os.path.exists(target) else \
                0o666 & ~_UMASK
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except OSError as e:
            raise _user_error(e, who, filepath, "moving the finished file into place "
                              "failed") from e
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def remove_stale_temporaries(folder, name):
    """Delete the hidden temporary files that killed saves of ``name`` left in ``folder``.

    A temporary file is named ``.<name>.<pid>.<random>.tmp``; it is stale when process ``pid``
    no longer runs (a save in progress in a live process is left alone). Files of the older
    ``.<name>.<random>.tmp`` form, written before the pid was recorded, are stale too.
    """
    prefix = f".{name}."
    try:
        entries = [e for e in os.listdir(folder) if e.startswith(prefix) and e.endswith(".tmp")]
    except OSError:
        return
    for entry in entries:
        parts = entry[len(prefix):-len(".tmp")].split(".")
        if len(parts) == 2 and parts[0].isdigit() and _process_alive(int(parts[0])):
            continue
        if len(parts) > 2:
            continue  # not one of ours
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, entry))


def _process_alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists, owned by someone else
        return True
    return True


def _no_room(error):
    """A full disk, an exceeded quota or a file bigger than the file system allows (h5py
    reports these with the C library's words in its message and no errno)."""
    return error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or any(
        words in str(error) for words in ("No space left", "quota exceeded", "File too large"))


def _user_error(error, who, filepath, what):
    """``error`` (an OSError) retold with the user's path instead of the temporary file's."""
    reason = error.strerror or str(error)
    message = (f"{who}: cannot write {os.fspath(filepath)!r}: {what} ({reason}); check that the "
               f"folder exists and is writable and that the disk has room (the previous file, if "
               f"any, is unchanged). Received: "
               f"filepath={os.fspath(filepath)!r}")
    try:
        return type(error)(error.errno, message) if error.errno is not None else \
            type(error)(message)
    except Exception:  # an OSError subclass with another constructor
        return OSError(error.errno, message)


def _fsync(path):
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _fsync_folder(folder):
    """Persist the rename itself (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
