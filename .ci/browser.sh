# Sourced by .ci/run: install the browser the dashboard test drives (placeholder until issue 14's
# dashboard work fills it in).
:
