"""The step engine: a plan of small observe-then-act steps, run with resumable progress."""
