from reconciler.fast_exit import entry

entry()  # the console script's entry: main(prog_name="reconciler"), then a fast exit where safe
