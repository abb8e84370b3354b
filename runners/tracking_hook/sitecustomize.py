"""Loaded by Python at start-up in a tracked job (its folder is first on PYTHONPATH): installs
tfdesk's Keras callback without importing anything heavy. See tfdesk_track.py."""
try:
    import tfdesk_track

    tfdesk_track.install()
except Exception as exc:  # noqa: BLE001 - tracking must never stop the user's job
    import sys
    print(f"tfdesk: run tracking is off for this job: {type(exc).__name__}: {exc}",
          file=sys.stderr)
