from reconciler.cli import main

main(prog_name="reconciler")  # usage, errors and shell completion say "reconciler", as the console script
