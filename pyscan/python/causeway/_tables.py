"""The tables of a capture: the same tables, columns and types as ``causeway export --format
parquet`` (``docs/parquet.md``; the Rust definition is ``scanner/src/export/parquet.rs``). The
pure-Python engine builds its rows against ``SCHEMAS``; the tests check that the compiled engine's
schemas are these.
"""

# (column, Arrow type, nullable), per table, in export order.
SCHEMAS = {
    "processes": [
        ("ring", "string", False),
        ("pid", "uint32", False),
        ("ppid", "uint32", False),
        ("exe", "string", False),
        ("host", "string", False),
        ("backend", "string", False),
        ("unplaced_device", "uint64", False),
    ],
    "calls": [
        ("ring", "string", False),
        ("pid", "uint32", False),
        ("seq", "uint64", False),
        ("tid", "uint32", False),
        ("api", "string", False),
        ("layer", "string", False),
        ("class", "string", True),
        ("begin_ns", "int64", False),
        ("end_ns", "int64", True),
        ("depth", "uint16", False),
        ("result", "int32", False),
        ("stream", "uint64", True),
        ("kernel", "string", True),
        ("kernel_symbol", "string", True),
    ],
    "device_intervals": [
        ("ring", "string", False),
        ("pid", "uint32", False),
        ("kind", "string", False),
        ("name", "string", False),
        ("symbol", "string", False),
        ("begin_ns", "int64", False),
        ("end_ns", "int64", False),
        ("bound_ns", "int64", False),
        ("stream", "string", False),
        ("stream_handle", "uint64", True),
        ("call_seq", "uint64", True),
        ("bytes", "uint64", False),
    ],
    "ranges": [
        ("ring", "string", False),
        ("pid", "uint32", False),
        ("tid", "uint32", False),
        ("name", "string", False),
        ("domain", "string", True),
        ("begin_ns", "int64", False),
        ("end_ns", "int64", True),
        ("level", "uint32", False),
    ],
    "marks": [
        ("ring", "string", False),
        ("pid", "uint32", False),
        ("tid", "uint32", False),
        ("name", "string", False),
        ("domain", "string", True),
        ("ns", "int64", False),
    ],
    "steps": [
        ("ring", "string", False),
        ("pid", "uint32", False),
        ("index", "uint64", False),
        ("tid", "uint32", False),
        ("range", "string", False),
        ("domain", "string", True),
        ("begin_ns", "int64", False),
        ("end_ns", "int64", False),
        ("wall_ns", "int64", False),
        ("launch_ns", "int64", False),
        ("launch_calls", "uint64", False),
        ("sync_ns", "int64", False),
        ("sync_calls", "uint64", False),
        ("other_ns", "int64", False),
        ("device_spans", "uint64", True),
        ("device_busy_ns", "int64", True),
        ("device_idle_ns", "int64", True),
        ("device_copy_ns", "int64", True),
        ("device_compute_ns", "int64", True),
        ("device_overlap_ns", "int64", True),
        ("device_bound_ns", "int64", True),
    ],
}

TABLES = list(SCHEMAS)


def _pa_type(pa, name):
    return {
        "uint16": pa.uint16(),
        "uint32": pa.uint32(),
        "uint64": pa.uint64(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "string": pa.string(),
    }[name]


def arrow_schema(name):
    """The pyarrow schema of table ``name``."""
    import pyarrow as pa

    return pa.schema(
        [pa.field(c, _pa_type(pa, t), nullable=n) for c, t, n in SCHEMAS[name]]
    )


class Table:
    """One table of a capture, column by column.

    ``to_arrow()`` needs pyarrow, ``to_pandas()`` pandas and pyarrow; ``to_dicts()`` and
    ``columns()`` need nothing. Integer columns of ``to_pandas()`` use pandas' nullable integer
    dtypes (``UInt64``, ``Int64``, …), so 64-bit handles and NULLs survive the round trip.
    """

    def __init__(self, backend, name):
        self._backend = backend
        self.name = name
        self.schema = [tuple(c) for c in backend.schema(name)]
        self._columns = None

    @property
    def column_names(self):
        return [c[0] for c in self.schema]

    @property
    def num_rows(self):
        return self._backend.num_rows(self.name)

    def __len__(self):
        return self.num_rows

    def __repr__(self):
        return f"<causeway table {self.name}: {self.num_rows} rows, columns {self.column_names}>"

    def columns(self):
        """``{column: list of values}`` (``None`` for NULL)."""
        if self._columns is None:
            from ._pyreader import no_gc

            with no_gc():
                cols = self._backend.columns(self.name)
            self._columns = dict(zip(self.column_names, cols))
        return self._columns

    def to_dicts(self):
        """One dict per row."""
        from ._pyreader import no_gc

        cols = self.columns()
        names = self.column_names
        with no_gc():
            return [dict(zip(names, row)) for row in zip(*(cols[n] for n in names))]

    def to_arrow(self):
        """A ``pyarrow.Table`` with the export's schema."""
        import pyarrow as pa

        stream = getattr(self._backend, "arrow_stream", None)
        if stream is not None and hasattr(pa.RecordBatchReader, "from_stream"):
            # The native engine's batches, handed over through the Arrow PyCapsule interface
            # (pyarrow >= 15) without a copy.
            return pa.RecordBatchReader.from_stream(_Stream(stream, self.name)).read_all()
        ipc = getattr(self._backend, "ipc", None)
        if ipc is not None:
            return pa.ipc.open_stream(ipc(self.name)).read_all()
        cols = self.columns()
        schema = arrow_schema(self.name)
        return pa.table(
            [pa.array(cols[f.name], type=f.type) for f in schema], schema=schema
        )

    def to_pandas(self):
        """A ``pandas.DataFrame`` (through Arrow)."""
        import pandas as pd
        import pyarrow as pa

        mapping = {
            pa.uint16(): pd.UInt16Dtype(),
            pa.uint32(): pd.UInt32Dtype(),
            pa.uint64(): pd.UInt64Dtype(),
            pa.int32(): pd.Int32Dtype(),
            pa.int64(): pd.Int64Dtype(),
        }
        return self.to_arrow().to_pandas(types_mapper=mapping.get)


class _Stream:
    """A native table as an object of the Arrow PyCapsule interface (``__arrow_c_stream__``)."""

    def __init__(self, stream, name):
        self._stream = stream
        self._name = name

    def __arrow_c_stream__(self, requested_schema=None):
        # The table's own schema is the export's; a requested one is not cast to.
        return self._stream(self._name)
