"""Persistence: every file jaxbandit writes, and its check on reading. The bottom floor of the package: it
imports nothing of jaxbandit's above it, and the runner (checkpoints, streamed stores) and the report
(the result type's save and load) both use it.

- :mod:`~jaxbandit.persist.atomic`: atomic writes and their flushes (``fsync``, ``syncfs``,
  ``renameat2``), and the leftovers of a killed writer;
- :mod:`~jaxbandit.persist.lock`: one writer at a time per target;
- :mod:`~jaxbandit.persist.manifest`: the manifest of a zarr store (every file's SHA-256, every chunk);
- :mod:`~jaxbandit.persist.formats`: formats by suffix, the attributes jaxbandit writes, netCDF written
  whole, the checksum of all a ``.nc`` holds, a zarr store read once.

Which guarantee comes from a library, and which is written here and why:

- From libraries: zip's CRC-32 of each ``.npz`` member, the dims and meta included (``zipfile``, checked
  as numpy reads a member); HDF5's Fletcher-32 of each chunk of a numeric ``.nc`` variable (h5netcdf);
  zarr's format 2 layout and codecs (zarr-python), and the kernel's ``flock`` (released when a writer
  dies, ``kill -9`` included).
- Written here, because no well-kept library does it: the atomic replacement of a file and of a whole
  directory with the flushes that make it survive a power loss (``os.replace`` does not flush;
  ``renameat2`` is reached through ``ctypes``); the removal of a killed writer's temporary files; the
  holder record a refusal names; a zarr store's manifest (zarr format 2 checks no chunk, and no zarr
  codec could tell a deleted chunk from one never written: the stores are written with every chunk);
  the SHA-256 of all a ``.nc`` holds (Fletcher-32 leaves the chunk index and the attributes
  unchecked); reading a verified store once, so that what is checked is what is decoded.
- Not used: zarr 3's ``crc32c`` codec (format 3, whose fixed-width strings are not stable yet; the
  manifest covers every chunk and the metadata as well), and ``filelock`` (``fcntl.flock`` is the
  same lock on Linux and macOS, and a lock on Windows would be its only gain: there a write goes on
  unlocked, with a warning).
"""
