"""MercadoFresco's own code: the handlers its Lambda functions run."""
