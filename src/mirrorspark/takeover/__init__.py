"""Taking a flow over from a MirrorMaker 2 that ran before: where MM2 stopped, and mirrorspark's first start there."""
