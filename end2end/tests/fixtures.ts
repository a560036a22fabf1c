import { expect, type Page } from "@playwright/test";

/** Opens `path` and waits until the wasm layer has hydrated the page
 * (clicks made before hydration are lost). */
export async function openHydrated(page: Page, path: string) {
  const response = await page.goto(path);
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  return response;
}
