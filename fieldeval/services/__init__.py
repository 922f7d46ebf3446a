"""The live services: Bedrock, a user's `--model` factory, and the local Bedrock stand-in.

With `fieldeval.scale`'s Dask client and local cluster (`score --cluster`), this is the only code of
the package that opens network sockets; the FCC example's datasets-server client lives with the
example (`walkthroughs.fcc.datasets_server`).
"""
