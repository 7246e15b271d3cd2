"""[JSL22] Jelassi, Sander, Li. Vision Transformers provably learn spatial structure. NeurIPS 2022,
arXiv 2210.09221. Claims JSL-1 to JSL-6."""
