"""The optional Milvus store: connection, layout, retriever and writer."""
