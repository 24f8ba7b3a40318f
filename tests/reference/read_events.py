#!/usr/bin/env python3
"""Reads a directory of TensorBoard event files that fusegrad wrote (fg::summary) with
TensorBoard's own EventAccumulator, a reader independent of fusegrad, and prints what it finds,
for tests/summary_test.cpp to compare with what it wrote:

    file_version <version, as TensorBoard parsed it>
    scalar <tag> <step> <wall time> <value>
    histogram <tag> <step> <wall time> <min> <max> <num> <sum> <sum of squares> <k> <k bucket limits> <k counts>

Numbers are printed as Python's repr (the shortest text that reads back exactly). Prints
"skipped: tensorboard is not installed" and exits 0 when TensorBoard is absent
(pip install tensorboard).

With --reference-bytes instead of a directory, it prints the TFRecord bytes (hex) of a few
Event messages as TensorBoard's protobuf classes serialize them and its RecordWriter frames them,
one line per event: the byte-for-byte reference of tests/summary_test.cpp's encoding test.

Usage: read_events.py DIRECTORY
       read_events.py --reference-bytes"""
import sys
import types

# TensorBoard reads event files with TensorFlow when it can import it, and otherwise with its own
# pure-Python stub (its record reader checks both CRCs); the marker module tensorboard.compat.notf
# makes it take the stub, so what reads the files here is TensorBoard alone, and quickly.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))

try:
    from tensorboard.backend.event_processing import event_accumulator as ea
except ImportError:
    print("skipped: tensorboard is not installed")
    sys.exit(0)


def reference_bytes():
    import io

    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    Value = summary_pb2.Summary.Value
    histo = summary_pb2.HistogramProto(min=1.0, max=7.0, num=5.0, sum=16.5, sum_squares=76.25,
                                       bucket_limit=[2.5, 4.0, 5.5, 7.0], bucket=[2.0, 1.0, 1.0, 1.0])
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
        summary_description="mean loss")
    events = [
        event_pb2.Event(wall_time=1700000000.0, file_version="brain.Event:2"),
        event_pb2.Event(wall_time=1.5, step=3, summary=summary_pb2.Summary(value=[Value(tag="loss", simple_value=0.25)])),
        event_pb2.Event(wall_time=2.0, step=-1, summary=summary_pb2.Summary(value=[Value(tag="h", histo=histo)])),
        event_pb2.Event(wall_time=2.25, step=300, summary=summary_pb2.Summary(
            value=[Value(tag="zero", simple_value=0.0, metadata=metadata), Value(tag="e", histo=summary_pb2.HistogramProto())])),
    ]
    for e in events:
        out = io.BytesIO()
        RecordWriter(out).write(e.SerializeToString())
        print(out.getvalue().hex())


if sys.argv[1] == "--reference-bytes":
    reference_bytes()
    sys.exit(0)

# Keep every value (0 = no limit): TensorBoard samples long series by default.
acc = ea.EventAccumulator(
    sys.argv[1],
    size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0},
    purge_orphaned_data=False,
)
acc.Reload()
print("file_version", acc.file_version)
tags = acc.Tags()
for tag in sorted(tags[ea.SCALARS]):
    for e in acc.Scalars(tag):
        print("scalar", tag, e.step, repr(e.wall_time), repr(float(e.value)))
for tag in sorted(tags[ea.HISTOGRAMS]):
    for e in acc.Histograms(tag):
        h = e.histogram_value
        numbers = [h.min, h.max, h.num, h.sum, h.sum_squares]
        print("histogram", tag, e.step, repr(e.wall_time), *(repr(float(x)) for x in numbers),
              len(h.bucket_limit), *(repr(float(x)) for x in h.bucket_limit),
              *(repr(float(x)) for x in h.bucket))
