"""`python -m gpulab`."""

from gpulab.cli import main

main()
