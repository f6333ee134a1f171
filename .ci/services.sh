# Sourced by .ci/run: install and start the real database servers the SQL label tests use.
# (Placeholder: filled in by the SQL-corpus work of issue 13.)
:
