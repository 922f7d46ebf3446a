"""The bundled examples: reference invoices, the offline invoice, FCC and the simulated runs."""
