"""Joint mining algorithms over an :class:`mpc.channel.Channel`; no daemon runtime here."""
