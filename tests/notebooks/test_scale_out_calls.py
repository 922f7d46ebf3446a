"""The Scale Out walkthrough shows the calls it teaches, so a reader can copy its cells.

Its cells start the Dask cluster, map the scoring of batches onto it and merge the batch reports
themselves, scoring each batch with Strands Evals and stickler as installed. Calling the tool's
scale-out (`fieldeval.scale`) hid all three, and ran the tool's sped-up stickler in the workers,
which a reader's own project would not have. The numbers themselves are checked by nbval, which
runs the notebook against its stored outputs (the merge equal to one process, field by field).
"""

from pathlib import Path

from tests.test_notebook_imports import _cells, _chain, _reached

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "Strands_Evals_Scale_Out.ipynb"
# The tool's scale-out, its one-process scorer and the stickler speed-up they install.
HIDDEN = ("fieldeval.scale", "fieldeval.harness.scoring", "fieldeval.harness.fast_stickler")
PACKAGES = tuple(f"{module}." for module in HIDDEN)
# What the cells must call themselves: the cluster on loopback, the map, the gather, the merge, the close.
SHOWN = (
    "LocalCluster(",
    'host="127.0.0.1"',
    "Client(cluster)",
    "client.map(score_batch, batches)",
    "client.gather(futures)",
    "StructuredOutputReport.flatten(",
    "Experiment(",
    "StructuredOutputSimilarity(Invoice)",
    "client.close()",
    "cluster.close()",
)


def test_the_notebook_reaches_neither_the_tools_scale_out_nor_its_sped_up_stickler():
    reached = _reached(NOTEBOOK)
    assert "walkthroughs.invoices" in reached  # the walk followed the notebook's imports
    hidden = [_chain(reached, module) for module in reached if module in HIDDEN or module.startswith(PACKAGES)]
    assert hidden == []


def test_the_cells_make_the_dask_and_strands_evals_calls_themselves():
    source = _cells(NOTEBOOK)
    assert [call for call in SHOWN if call not in source] == []
