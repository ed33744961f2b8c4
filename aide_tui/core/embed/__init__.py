"""Embedding backends: builtin (numpy MiniLM), OpenAI-compatible (llama.cpp), Ollama."""
