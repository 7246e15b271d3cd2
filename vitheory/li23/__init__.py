"""[LI23] Li, Wang, Liu, Chen. A Theoretical Understanding of Shallow Vision Transformers: Learning,
Generalization, and Sample Complexity. ICLR 2023, arXiv 2302.06015. Claims LI-1 to LI-5."""
