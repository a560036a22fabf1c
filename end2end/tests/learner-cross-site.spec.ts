// A link to a lesson on another site: it opens nothing by itself (no
// website can spend a learner's accesses); one click here opens it.
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, baseURL, createCourse, enterCode, newLearner, shareState, sql } from "./course";

test("a link from another site counts nothing; the one click here opens the lesson", async ({ page, context }) => {
  const api = await adminApi();
  const course = await createCourse(api);
  await newLearner(context, "elsewhere");
  const records = () => sql(`SELECT count(*) FROM access_records WHERE share_id = '${course.id}'`);

  // The learner holds the course: code entered, the video opened here.
  await openHydrated(page, `/s/${course.slug}`);
  await enterCode(page, course.codes[0]);
  await expect(shareState(page)).toHaveAttribute("data-state", "pending");
  await page.getByRole("link", { name: "Lesson 1: Ownership" }).click();
  await expect(page.locator(".bound-note")).toBeVisible();
  expect(records()).toBe("1");

  // Another site links to the welcome notes, which were never opened.
  const notes = `${baseURL}/s/${course.slug}/r/${course.page}`;
  await page.route("http://elsewhere.test/**", (route) =>
    route.fulfill({ contentType: "text/html", body: `<!DOCTYPE html><a href="${notes}">Read the notes</a>` }),
  );
  await page.goto("http://elsewhere.test/");
  await page.getByRole("link", { name: "Read the notes" }).click();
  await expect(page.locator("section.refused")).toHaveAttribute("data-reason", "open_from_course_page");
  await expect(page.getByRole("alert")).toContainText("Open this resource from its course page");
  expect(records(), "nothing counted from the other site").toBe("1");

  // Hydrated, the offered link is still a real request from this site.
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  await page.getByRole("link", { name: "Open it" }).click();
  await expect(page.frameLocator("iframe.page-frame").getByRole("heading", { name: "Welcome" })).toBeVisible();
  expect(records()).toBe("2");
});
