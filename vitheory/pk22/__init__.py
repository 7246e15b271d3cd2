"""[PK22] Park, Kim. How Do Vision Transformers Work? ICLR 2022, arXiv 2202.06709. Claims PK-1 to PK-8."""
