/* Suggestions for the fields that name a bot (the search on every page, the compare form of a bot's
   page): the names /api/v1/rumbles/<game>/search finds for what is typed, in a <datalist>; picking
   a name in the search goes straight to that bot's page. Without this script both forms still work:
   the search shows the rankings of the bots whose name starts so, the compare form takes a full name. */
"use strict";
(() => {
  const root = new URL("..", document.currentScript.src);  /* the site's root, above /static/ */
  document.querySelectorAll("form.search [name=prefix], form.compare [name=botb]").forEach((input, n) => {
    const list = document.createElement("datalist");
    const search = new URL("api/v1/rumbles/" + encodeURIComponent(input.form.elements.game.value) + "/search", root);
    let asked = "", urls = new Map(), timer;
    list.id = "suggested-" + n;
    input.after(list);
    input.setAttribute("list", list.id);
    input.autocomplete = "off";
    async function suggest() {
      const prefix = input.value.trim();
      if (!prefix || prefix === asked) return;
      asked = prefix;
      search.searchParams.set("prefix", prefix);
      try {
        const answer = await fetch(search);
        if (!answer.ok || prefix !== asked) return;
        const items = (await answer.json()).items;
        urls = new Map(items.map(bot => [bot.name, bot.url]));
        list.replaceChildren(...items.map(bot => new Option(bot.active ? "" : "retired", bot.name)));
        list.dataset.prefix = prefix;  /* what the names are for (the browser tests wait on it) */
      } catch (error) {
        /* no suggestions this time: the form works without them */
      }
    }
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(suggest, 150);
    });
    if (input.name === "prefix") {
      input.form.addEventListener("submit", event => {
        const url = urls.get(input.value.trim());
        if (url) {
          event.preventDefault();
          location.assign(url);
        }
      });
    }
  });
})();
