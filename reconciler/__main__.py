from reconciler.cli.main import main

main(prog_name="reconciler")  # as the console script: usage and completion say "reconciler"
