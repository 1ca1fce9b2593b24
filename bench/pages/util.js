// Helpers of the side-by-side bench pages (common.js) and of the hook it adds to the product page.
window.benchUtil = {
  median(values) {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  },
  // Calls of `run` for about budgetMs (at least minCalls) after warmupMs (at least one call) of untimed calls;
  // their times in ms.
  async timeCalls(run, { warmupMs, budgetMs, minCalls }) {
    for (let start = performance.now(), n = 0; n < 1 || performance.now() - start < warmupMs; n++) await run();
    const times = [];
    for (const start = performance.now(); times.length < minCalls || performance.now() - start < budgetMs;) {
      const t = performance.now();
      await run();
      times.push(performance.now() - t);
    }
    return times;
  },
  async bytes(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.arrayBuffer();
  },
};
