"""The live services, and the only code that opens sockets: Bedrock and the datasets server."""
