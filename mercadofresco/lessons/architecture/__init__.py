"""Section 16: MercadoFresco's whole flow end to end, its report and its cost (notebook 16)."""
