"""Shell text: positions of interpolations in a bash script and quoting values for them; and
running a process in a group of its own, bounded in time and output (`process`)."""
