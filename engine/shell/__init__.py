"""Shell text: positions of interpolations in a bash script and quoting values for them."""
