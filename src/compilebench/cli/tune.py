"""`compilebench tune`: placeholder until the search lands."""


def cmd_tune(args) -> int:
    raise NotImplementedError
