// What the browser tests share: Debian's Chromium, headless, driven by
// playwright-core.
import { chromium } from "playwright-core";

// openPage launches the browser and opens a page with options (viewport,
// touch…); its actions wait at most 20 s. Close the browser when done.
export async function openPage(options) {
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const page = await browser.newPage(options);
  page.setDefaultTimeout(20000);
  return { browser, page };
}
