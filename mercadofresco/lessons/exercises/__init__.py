"""The lesson's exercises (section 18) as properties: what must hold in every world, and the worlds that test it."""
