// d3-flame-graph ships no types: the chart is used through `any`.
declare module "d3-flame-graph" {
  const flamegraph: () => any;
  export default flamegraph;
}
