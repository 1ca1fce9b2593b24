export default {
  entry: "./main.js",
};
