"""simpy simulations: the same policy objects as on moto, at the lesson's scale (thousands of orders, hours of time)."""
