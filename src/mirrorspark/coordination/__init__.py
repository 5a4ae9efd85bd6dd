"""One writer per flow: a lease group on the target, claims saying who wrote a flow last, and fencing."""
